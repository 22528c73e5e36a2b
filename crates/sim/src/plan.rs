//! What a request will generate: how many tokens, why it stops, and the text of each token.
//!
//! Rules (docs/simulator.md, "Output text"):
//! - Source: the [`crate::AnswerBook`] text when it knows the prompt (tokens = its words, each
//!   token keeping the whitespace before it, so the streamed text equals the answer), else
//!   generic English words seeded by the prompt (same prompt → same text, temperature ignored).
//! - Natural end (EOS): after the answer's last word, or after 64–1,024 generic words. It is
//!   ignored with `ignore_eos` and deferred to `min_tokens`.
//! - `max_tokens` caps the count (`finish_reason` "length"); a natural end gives "stop".
//! - Past the answer (ignore_eos / min_tokens), filler generic words follow.
//! - `stop` strings end generation at the first token whose text completes one (checked only
//!   once `min_tokens` tokens exist, as vLLM does); the text is cut before the stop string
//!   (kept with `include_stop_str_in_output`) and `finish_reason` is "stop".

use crate::text;

/// Why generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    /// Natural end or a stop string.
    Stop,
    /// `max_tokens` reached.
    Length,
}

impl FinishReason {
    /// The OpenAI `finish_reason` string.
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
        }
    }
}

/// Sampling knobs that decide the plan.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GenParams {
    /// Cap on generated tokens (≥ 1).
    pub max_tokens: u32,
    /// No natural end before this many tokens.
    pub min_tokens: u32,
    /// Never end naturally.
    pub ignore_eos: bool,
    /// Stop strings.
    pub stop: Vec<String>,
    /// Keep the stop string in the text.
    pub include_stop_str_in_output: bool,
}

#[derive(Debug, Clone)]
enum Source {
    Generic {
        seed: u64,
    },
    Answer {
        text: String,
        spans: Vec<(u32, u32)>,
        seed: u64,
    },
    Explicit {
        texts: Vec<String>,
    },
}

/// The planned output of one request.
#[derive(Debug, Clone)]
pub struct OutputPlan {
    /// Tokens that will be generated (≥ 1).
    pub n_tokens: u32,
    /// Finish reason of the last token.
    pub finish_reason: FinishReason,
    source: Source,
}

fn word_spans(s: &str) -> Vec<(u32, u32)> {
    let mut spans = Vec::new();
    let mut prev_end = None;
    let mut in_word = false;
    let mut word_start = 0;
    for (i, ch) in s.char_indices() {
        if ch.is_whitespace() {
            if in_word {
                spans.push((prev_end.unwrap_or(word_start) as u32, i as u32));
                prev_end = Some(i);
                in_word = false;
            }
        } else if !in_word {
            in_word = true;
            word_start = i;
        }
    }
    if in_word {
        spans.push((prev_end.unwrap_or(word_start) as u32, s.len() as u32));
    }
    spans
}

impl OutputPlan {
    /// Plans the output for a prompt identified by `prompt_seed_text` (hashed for the generic
    /// text), with `answer` from the answer book if it knows the prompt.
    pub fn build(prompt_seed_text: &str, answer: Option<String>, p: &GenParams) -> OutputPlan {
        let seed = text::fnv1a(prompt_seed_text.as_bytes());
        let (source, natural) = match answer {
            Some(a) => {
                let spans = word_spans(&a);
                let n = spans.len() as u32;
                (
                    Source::Answer {
                        text: a,
                        spans,
                        seed,
                    },
                    n,
                )
            }
            None => (Source::Generic { seed }, text::generic_natural_len(seed)),
        };
        let max = p.max_tokens.max(1);
        let natural = if p.ignore_eos {
            u32::MAX
        } else {
            natural.max(p.min_tokens).max(1)
        };
        let (n, reason) = if natural <= max {
            (natural, FinishReason::Stop)
        } else {
            (max, FinishReason::Length)
        };
        let mut plan = OutputPlan {
            n_tokens: n,
            finish_reason: reason,
            source,
        };
        if !p.stop.is_empty() && p.stop.iter().any(|s| !s.is_empty()) {
            plan.apply_stop(p);
        }
        plan
    }

    fn apply_stop(&mut self, p: &GenParams) {
        let mut texts: Vec<String> = Vec::with_capacity(self.n_tokens as usize);
        let mut full = String::new();
        let mut cut: Option<(u32, usize)> = None;
        for i in 0..self.n_tokens {
            let mut t = String::new();
            self.push_token_text(i, &mut t);
            let prev_len = full.len();
            full.push_str(&t);
            texts.push(t);
            if i + 1 < p.min_tokens {
                continue;
            }
            let mut best: Option<(usize, usize)> = None;
            for s in p.stop.iter().filter(|s| !s.is_empty()) {
                let mut from = prev_len.saturating_sub(s.len() - 1);
                while !full.is_char_boundary(from) {
                    from -= 1;
                }
                if let Some(pos) = full[from..].find(s.as_str()) {
                    let pos = from + pos;
                    if best.is_none_or(|(b, _)| pos < b) {
                        best = Some((pos, s.len()));
                    }
                }
            }
            if let Some((pos, len)) = best {
                let keep = if p.include_stop_str_in_output {
                    pos + len
                } else {
                    pos
                };
                cut = Some((i + 1, keep));
                break;
            }
        }
        let Some((n, keep)) = cut else {
            return;
        };
        // Clip every token's text to the kept prefix of the full text.
        let mut offset = 0;
        let mut clipped = Vec::with_capacity(n as usize);
        for t in texts.into_iter().take(n as usize) {
            let end = offset + t.len();
            let piece = if end <= keep {
                t
            } else if offset >= keep {
                String::new()
            } else {
                t[..keep - offset].to_string()
            };
            offset = end;
            clipped.push(piece);
        }
        self.n_tokens = n;
        self.finish_reason = FinishReason::Stop;
        self.source = Source::Explicit { texts: clipped };
    }

    /// Appends the text of token `i` (0-based) to `out`.
    pub fn push_token_text(&self, i: u32, out: &mut String) {
        match &self.source {
            Source::Generic { seed } => {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(text::generic_word(*seed, i));
            }
            Source::Answer { text, spans, seed } => match spans.get(i as usize) {
                Some(&(a, b)) => out.push_str(&text[a as usize..b as usize]),
                None => {
                    if i > 0 {
                        out.push(' ');
                    }
                    out.push_str(text::generic_word(*seed, i));
                }
            },
            Source::Explicit { texts } => {
                if let Some(t) = texts.get(i as usize) {
                    out.push_str(t);
                }
            }
        }
    }

    /// The whole generated text.
    pub fn full_text(&self) -> String {
        let mut s = String::new();
        for i in 0..self.n_tokens {
            self.push_token_text(i, &mut s);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(max: u32) -> GenParams {
        GenParams {
            max_tokens: max,
            ..Default::default()
        }
    }

    #[test]
    fn ignore_eos_generates_exactly_max_tokens_words() {
        let p = GenParams {
            max_tokens: 300,
            ignore_eos: true,
            ..Default::default()
        };
        let plan = OutputPlan::build("prompt", None, &p);
        assert_eq!(plan.n_tokens, 300);
        assert_eq!(plan.finish_reason, FinishReason::Length);
        assert_eq!(text::count_tokens(&plan.full_text()), 300);
    }

    #[test]
    fn generic_text_ends_naturally_when_max_tokens_is_large() {
        let plan = OutputPlan::build("prompt", None, &params(100_000));
        assert_eq!(plan.finish_reason, FinishReason::Stop);
        assert!((64..=1024).contains(&plan.n_tokens));
        assert_eq!(plan.n_tokens, text::count_tokens(&plan.full_text()));
    }

    #[test]
    fn answers_stream_verbatim_and_honour_max_tokens_and_ignore_eos() {
        let ans = "Natalia sold 48/2 = 24 clips in May.\nShe sold 48+24 = 72.\n#### 72".to_string();
        let words = text::count_tokens(&ans);
        let plan = OutputPlan::build("q", Some(ans.clone()), &params(1000));
        assert_eq!(plan.full_text(), ans);
        assert_eq!(
            (plan.n_tokens, plan.finish_reason),
            (words, FinishReason::Stop)
        );
        let plan = OutputPlan::build("q", Some(ans.clone()), &params(3));
        assert_eq!(plan.full_text(), "Natalia sold 48/2");
        assert_eq!(plan.finish_reason, FinishReason::Length);
        let p = GenParams {
            max_tokens: words + 5,
            ignore_eos: true,
            ..Default::default()
        };
        let plan = OutputPlan::build("q", Some(ans.clone()), &p);
        let t = plan.full_text();
        assert!(t.starts_with(&ans) && t.len() > ans.len());
        assert_eq!(text::count_tokens(&t), words + 5);
        let p = GenParams {
            max_tokens: 100,
            min_tokens: words + 2,
            ..Default::default()
        };
        assert_eq!(OutputPlan::build("q", Some(ans), &p).n_tokens, words + 2);
    }

    #[test]
    fn stop_strings_cut_the_text_and_the_count() {
        let ans = "Step one. Question: next one here".to_string();
        let p = GenParams {
            max_tokens: 100,
            stop: vec!["Question:".into()],
            ..Default::default()
        };
        let plan = OutputPlan::build("q", Some(ans.clone()), &p);
        assert_eq!(plan.full_text(), "Step one. ");
        assert_eq!((plan.n_tokens, plan.finish_reason), (3, FinishReason::Stop));
        let p = GenParams {
            include_stop_str_in_output: true,
            ..p
        };
        assert_eq!(
            OutputPlan::build("q", Some(ans.clone()), &p).full_text(),
            "Step one. Question:"
        );
        // min_tokens defers the check: the stop string is then only found in new text.
        let p = GenParams {
            max_tokens: 100,
            min_tokens: 4,
            stop: vec!["one".into()],
            ..Default::default()
        };
        let plan = OutputPlan::build("q", Some(ans), &p);
        assert_eq!(plan.full_text(), "Step one. Question: next ");
        assert_eq!(plan.n_tokens, 5);
    }
}
