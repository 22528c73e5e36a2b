//! GSM8K scoring exactly as lm-evaluation-harness does it: the `regex` filter (Python
//! `re.findall` + `group_select` + first non-empty group + `strip()`, fallback `[invalid]`),
//! `take_first`, and the `exact_match` metric (`regexes_to_ignore` applied with Python
//! `re.sub`, then `ignore_case`), aggregated as a mean with the standard error of a mean.
//!
//! Sources: lm-eval 0.4.13 `lm_eval/filters/extraction.py::RegexFilter.apply`,
//! `lm_eval/api/metrics.py::exact_match_hf_evaluate`, `mean`, `sample_stddev`, `mean_stderr`.
//!
//! Python regex semantics that differ from Rust's `regex` are translated, not ignored: Python's
//! `$` (no MULTILINE) matches at the end *or before a final newline*, so it becomes the
//! lookahead `(?=\n?\z)` (hence `fancy-regex`); `\Z` becomes `\z`. Everything else the GSM8K
//! patterns use (`[...]` classes, escapes like `\-` `\,` `\$`, `(?s)`, alternation with
//! leftmost-first priority, greedy `.*`) means the same in both engines.

use crate::error::EvalError;

/// A regular expression with Python `re` semantics for the constructs lm-eval tasks use.
#[derive(Debug, Clone)]
pub struct PyRegex {
    /// The pattern as written in the task YAML (Python syntax).
    pub pattern: String,
    re: fancy_regex::Regex,
    groups: usize,
}

/// Translates a Python `re` pattern to `fancy-regex` syntax (see the module docs).
pub fn translate_python_pattern(py: &str) -> String {
    let mut out = String::with_capacity(py.len() + 16);
    let mut chars = py.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(n) = chars.next() else {
                    out.push('\\');
                    break;
                };
                if !in_class && n == 'Z' {
                    out.push_str("\\z");
                } else {
                    out.push('\\');
                    out.push(n);
                }
                continue;
            }
            '[' if !in_class => {
                in_class = true;
                out.push(c);
                // `[^]...]` / `[]...]`: a leading `]` is literal in Python.
                if chars.peek() == Some(&'^') {
                    out.push(chars.next().unwrap());
                }
                if chars.peek() == Some(&']') {
                    chars.next();
                    out.push_str("\\]");
                }
                continue;
            }
            ']' if in_class => {
                in_class = false;
                out.push(c);
            }
            // Literal in Python; nested class / set operators (`&&`, `~~`) in Rust.
            '[' | '&' | '~' if in_class => {
                out.push('\\');
                out.push(c);
            }
            '$' if !in_class => out.push_str("(?=\\n?\\z)"),
            _ => out.push(c),
        }
    }
    out
}

impl PyRegex {
    /// Compiles a Python-syntax pattern.
    ///
    /// # Errors
    /// The pattern does not compile after translation ([`EvalError::Regex`], naming the
    /// pattern).
    pub fn new(pattern: &str) -> Result<PyRegex, EvalError> {
        let translated = translate_python_pattern(pattern);
        let re = match fancy_regex::Regex::new(&translated) {
            Ok(re) => re,
            Err(e) => {
                return Err(EvalError::Regex {
                    pattern: pattern.to_string(),
                    translated,
                    source: Box::new(e),
                })
            }
        };
        let groups = re.captures_len() - 1;
        Ok(PyRegex {
            pattern: pattern.to_string(),
            re,
            groups,
        })
    }

    /// Python `re.findall`: one entry per non-overlapping match; the whole match when the
    /// pattern has no groups, else the groups (an unmatched group is `""`).
    pub fn findall(&self, text: &str) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        for caps in self.re.captures_iter(text) {
            // A backtracking-limit error cannot happen for these linear patterns; treat it as
            // "no further match" rather than panic.
            let Ok(caps) = caps else { break };
            if self.groups == 0 {
                out.push(vec![caps.get(0).map_or("", |m| m.as_str()).to_string()]);
            } else {
                out.push(
                    (1..=self.groups)
                        .map(|g| caps.get(g).map_or("", |m| m.as_str()).to_string())
                        .collect(),
                );
            }
        }
        out
    }

    /// Python `re.sub(pattern, "", text)`: deletes every non-overlapping match.
    pub fn delete_all(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for m in self.re.find_iter(text) {
            let Ok(m) = m else { break };
            out.push_str(&text[last..m.start()]);
            last = m.end();
        }
        out.push_str(&text[last..]);
        out
    }
}

/// Python `str.strip()` with no argument: strips characters for which `str.isspace()` is
/// true (Unicode White_Space plus U+001C..U+001F).
pub fn py_strip(s: &str) -> &str {
    let ws = |c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c);
    s.trim_matches(ws)
}

/// lm-eval's `regex` filter followed by `take_first` (one sampled response per doc, so
/// `take_first` is the identity on it).
#[derive(Debug, Clone)]
pub struct RegexFilter {
    /// Filter name as lm-eval reports it (`strict-match`, `flexible-extract`).
    pub name: &'static str,
    /// The compiled `regex_pattern`.
    pub regex: PyRegex,
    /// `group_select`: which match to take; Python list index (0 first, -1 last).
    pub group_select: i64,
    /// Returned when nothing matches (`[invalid]`).
    pub fallback: String,
}

impl RegexFilter {
    /// Builds a filter from the task YAML's fields.
    ///
    /// # Errors
    /// The pattern does not compile.
    pub fn new(name: &'static str, pattern: &str, group_select: i64) -> Result<Self, EvalError> {
        Ok(RegexFilter {
            name,
            regex: PyRegex::new(pattern)?,
            group_select,
            fallback: "[invalid]".to_string(),
        })
    }

    /// `RegexFilter.apply` on one response: `findall`, pick `group_select`, for a multi-group
    /// pattern the first non-empty group (fallback if none), then `strip()`.
    /// An out-of-range `group_select` (an IndexError in Python) yields the fallback.
    pub fn apply(&self, response: &str) -> String {
        let matches = self.regex.findall(response);
        if matches.is_empty() {
            return self.fallback.clone();
        }
        let n = matches.len() as i64;
        let idx = if self.group_select < 0 {
            n + self.group_select
        } else {
            self.group_select
        };
        if idx < 0 || idx >= n {
            return self.fallback.clone();
        }
        let m = &matches[idx as usize];
        let picked = if self.regex.groups <= 1 {
            m[0].as_str()
        } else {
            m.iter()
                .find(|g| !g.is_empty())
                .map_or(self.fallback.as_str(), |g| g.as_str())
        };
        py_strip(picked).to_string()
    }
}

/// The `exact_match` metric's options (`metric_list[0]` of the task YAML).
#[derive(Debug, Clone)]
pub struct ExactMatch {
    /// Applied in order to both prediction and reference with `re.sub(s, "", x)`.
    pub regexes_to_ignore: Vec<PyRegex>,
    /// Lower-case both sides after the deletions (Python `str.lower`).
    pub ignore_case: bool,
}

impl ExactMatch {
    /// Builds the metric from YAML-style fields.
    ///
    /// # Errors
    /// A pattern does not compile.
    pub fn new(regexes_to_ignore: &[&str], ignore_case: bool) -> Result<Self, EvalError> {
        Ok(ExactMatch {
            regexes_to_ignore: regexes_to_ignore
                .iter()
                .map(|p| PyRegex::new(p))
                .collect::<Result<_, _>>()?,
            ignore_case,
        })
    }

    /// The normalised form `exact_match_hf_evaluate` compares.
    pub fn normalise(&self, s: &str) -> String {
        let mut s = s.to_string();
        for re in &self.regexes_to_ignore {
            s = re.delete_all(&s);
        }
        if self.ignore_case {
            s = s.to_lowercase();
        }
        s
    }

    /// `(normalised prediction, normalised reference, equal)`.
    pub fn score(&self, prediction: &str, reference: &str) -> (String, String, bool) {
        let p = self.normalise(prediction);
        let r = self.normalise(reference);
        let eq = p == r;
        (p, r, eq)
    }
}

/// lm-eval `mean`: `sum(arr) / len(arr)`, summed left to right. `None` for an empty list.
pub fn mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut s = 0.0;
    for v in values {
        s += v;
    }
    Some(s / values.len() as f64)
}

/// lm-eval `mean_stderr` = `sample_stddev(arr) / sqrt(len(arr))`, with `sample_stddev =
/// sqrt(sum((x - mean)²) / (n - 1))` summed left to right. lm-eval reports `"N/A"` when
/// fewer than two samples exist; that is `None` here.
pub fn mean_stderr(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let mu = mean(values)?;
    let mut ss = 0.0;
    for v in values {
        ss += (v - mu) * (v - mu);
    }
    let sd = (ss / (values.len() - 1) as f64).sqrt();
    Some(sd / (values.len() as f64).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollar_matches_before_final_newline_like_python() {
        let re = PyRegex::new(r"\.$").unwrap();
        assert_eq!(re.delete_all("18."), "18");
        assert_eq!(re.delete_all("18.\n"), "18\n");
        assert_eq!(re.delete_all("18.\n\n"), "18.\n\n");
        assert_eq!(re.delete_all("1.5"), "1.5");
    }

    #[test]
    fn translation_keeps_classes_and_escapes() {
        assert_eq!(translate_python_pattern(r"[$0-9]"), r"[$0-9]");
        assert_eq!(translate_python_pattern(r"\$"), r"\$");
        assert_eq!(translate_python_pattern(r"a\Z"), r"a\z");
        assert_eq!(translate_python_pattern(r"[]a]"), r"[\]a]");
        assert!(PyRegex::new(r"#### (\-?[0-9\.\,]+)").is_ok());
    }

    #[test]
    fn stderr_matches_hand_computation() {
        // [1, 0, 0]: mean 1/3, sample sd sqrt(1/3), se = sqrt(1/3)/sqrt(3) = 1/3.
        let se = mean_stderr(&[1.0, 0.0, 0.0]).unwrap();
        assert!((se - 1.0 / 3.0).abs() < 1e-15);
        assert_eq!(mean_stderr(&[1.0]), None);
        assert_eq!(mean(&[]), None);
    }
}
